"""The engine's version: stored with every run; a new version invalidates reused results."""

ENGINE_VERSION = "0.3.0"     # 0.3: activations as PyTorch saves them (training.framework)
