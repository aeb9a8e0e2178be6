// JupyterLab's theme, read from its CSS variables (--jp-*), for the charts (a Vega config) and
// the grids (AG Grid theme parameters). Outside JupyterLab the variables are missing and the
// light defaults apply. A theme switch in JupyterLab changes `data-jp-theme-light` on <body>:
// `onThemeChange` reports it so charts are drawn again with the new colours.

export interface Palette {
  dark: boolean;
  font: string;
  mono: string;
  fontSize: number;
  fg0: string;
  fg1: string;
  fg2: string;
  fg3: string;
  bg0: string;
  bg1: string;
  bg2: string;
  border1: string;
  border2: string;
  accent: string;
  warn: string;
  error: string;
  ok: string;
}

function cssVar(el: Element, name: string, fallback: string): string {
  const v = getComputedStyle(el).getPropertyValue(name).trim();
  return v || fallback;
}

/** Is JupyterLab (or the page) in a dark theme? */
export function isDark(): boolean {
  const flag = document.body?.getAttribute('data-jp-theme-light');
  if (flag !== null && flag !== undefined) return flag === 'false';
  const vscode = document.body?.getAttribute('data-vscode-theme-kind');
  if (vscode) return vscode.includes('dark');
  return false;
}

/** The colours and fonts in effect at `el`. */
export function palette(el: Element): Palette {
  const dark = isDark();
  const d = (light: string, darkValue: string) => (dark ? darkValue : light);
  const size = parseFloat(cssVar(el, '--jp-ui-font-size1', '13px')) || 13;
  return {
    dark,
    font: cssVar(el, '--jp-ui-font-family', 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'),
    mono: cssVar(el, '--jp-code-font-family', 'Menlo, Consolas, "DejaVu Sans Mono", monospace'),
    fontSize: size,
    fg0: cssVar(el, '--jp-ui-font-color0', d('rgba(0,0,0,1)', 'rgba(255,255,255,1)')),
    fg1: cssVar(el, '--jp-ui-font-color1', d('rgba(0,0,0,0.87)', 'rgba(255,255,255,0.87)')),
    fg2: cssVar(el, '--jp-ui-font-color2', d('rgba(0,0,0,0.54)', 'rgba(255,255,255,0.54)')),
    fg3: cssVar(el, '--jp-ui-font-color3', d('rgba(0,0,0,0.38)', 'rgba(255,255,255,0.38)')),
    bg0: cssVar(el, '--jp-layout-color0', d('#ffffff', '#111111')),
    bg1: cssVar(el, '--jp-layout-color1', d('#ffffff', '#212121')),
    bg2: cssVar(el, '--jp-layout-color2', d('#eeeeee', '#424242')),
    border1: cssVar(el, '--jp-border-color1', d('#bdbdbd', '#616161')),
    border2: cssVar(el, '--jp-border-color2', d('#e0e0e0', '#424242')),
    accent: cssVar(el, '--jp-brand-color1', d('#1976d2', '#42a5f5')),
    warn: cssVar(el, '--jp-warn-color1', d('#f57c00', '#ffa726')),
    error: cssVar(el, '--jp-error-color1', d('#d32f2f', '#ef5350')),
    ok: cssVar(el, '--jp-success-color1', d('#388e3c', '#66bb6a')),
  };
}

/** A Vega config following the palette: transparent background, themed axes, legends, titles. */
export function vegaConfig(p: Palette): Record<string, unknown> {
  const label = { labelColor: p.fg2, titleColor: p.fg1, labelFont: p.font, titleFont: p.font, labelFontSize: 11, titleFontSize: 11 };
  return {
    background: null,
    font: p.font,
    padding: 6,
    view: { stroke: null, continuousWidth: 400, continuousHeight: 220 },
    title: { color: p.fg1, font: p.font, fontSize: 12, fontWeight: 600, anchor: 'start', subtitleColor: p.fg2 },
    axis: {
      ...label,
      domainColor: p.border1,
      tickColor: p.border1,
      gridColor: p.border2,
      gridOpacity: p.dark ? 0.5 : 0.8,
      titleFontWeight: 500,
      labelLimit: 180,
    },
    legend: { ...label, symbolStrokeColor: p.fg2, titleFontWeight: 500, labelLimit: 220 },
    header: { labelColor: p.fg1, titleColor: p.fg1, labelFont: p.font, titleFont: p.font },
    range: {
      category: p.dark
        ? ['#6ea8ff', '#ff9e4a', '#7fd17f', '#ff6b6b', '#c497ff', '#c79a7a', '#f59fd0', '#b0b0b0', '#e3dc6a', '#5fd3e0']
        : ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'],
    },
    mark: { color: p.accent },
    rule: { color: p.fg2 },
    text: { color: p.fg1, font: p.font },
    // marks drawn in light colours on dark backgrounds stay readable
    rect: { stroke: null },
    tick: { thickness: 3, bandSize: 14 },
  };
}

/** Call `cb` when JupyterLab switches between light and dark themes (returns the unsubscribe). */
export function onThemeChange(cb: () => void): () => void {
  if (!document.body || typeof MutationObserver === 'undefined') return () => undefined;
  let last = isDark();
  const obs = new MutationObserver(() => {
    const now = isDark();
    if (now !== last) {
      last = now;
      cb();
    }
  });
  obs.observe(document.body, { attributes: true, attributeFilter: ['data-jp-theme-light', 'data-jp-theme-name', 'data-vscode-theme-kind'] });
  return () => obs.disconnect();
}
