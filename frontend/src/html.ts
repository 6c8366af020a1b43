// Escaping for the HTML strings ECharts tooltips take. Pure: no DOM.

/** Escape &, <, >, " and ' as numeric character references. */
export const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
