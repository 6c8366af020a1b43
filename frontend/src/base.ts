// Loaded on every page: the CSS (Pico, light/dark by the OS setting or <html data-theme>)
// and tierlab's few additions. Page scripts import this too, so either order works.
import "@picocss/pico/css/pico.min.css";
import "./styles/app.css";
// the scenario list's "Compare checked" (does nothing on other pages)
import "./pages/compare_bar";

document.documentElement.classList.add("js");
