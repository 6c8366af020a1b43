// Vite builds the browser code that Django serves through django-vite.
// django-vite reads dist/.vite/manifest.json by the entry paths below (relative to this folder).
import { defineConfig } from "vitest/config";

export default defineConfig({
  base: "/static/",
  build: {
    manifest: true,
    outDir: "dist",
    emptyOutDir: true,
    // ECharts (core + bar, line, scatter, custom + dataZoom, markLine/markArea + SVG renderer)
    // is most of the run page: ~670 kB, ~230 kB gzipped.
    chunkSizeWarningLimit: 800,
    rollupOptions: {
      input: [
        "src/base.ts",
        "src/pages/scenario_form.ts",
        "src/pages/run_result.ts",
        // the comparison dashboard
        "src/pages/compare.ts",
        "src/pages/sweep.ts",
        "src/pages/plan.ts",
        "src/pages/share_panel.ts",
        "src/pages/scenario_prefill.ts",
      ],
    },
  },
  server: {
    // `npm run dev` for django-vite's dev mode (DJANGO_VITE dev_mode = True).
    port: 5173,
    strictPort: true,
    origin: "http://localhost:5173",
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
