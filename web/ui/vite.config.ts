import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The build goes to ../dist, which the Go server embeds (web/ui.go).
// `npm run dev` proxies the API to a stitchd on 127.0.0.1:8080.
export default defineConfig({
  plugins: [react()],
  base: "/",
  build: {
    outDir: "../dist",
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 1024,
  },
  server: {
    proxy: {
      "/api": "http://127.0.0.1:8080",
      "/hooks": "http://127.0.0.1:8080",
    },
  },
});
