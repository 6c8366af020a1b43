"""The comparison dashboard: comparisons of 2–8 scenarios, sweeps, share links and exports."""
