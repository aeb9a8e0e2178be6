// Builds the explorer's front end into the Python package (deltaexplore/widgets/static/):
//   explorer.js   one ES module (anywidget's `_esm`): our TypeScript + Arrow JS + Vega + AG Grid
//   explorer.css  our styles, every rule scoped under the build's root class
//   build.json    the build id (a hash of every input) and the inputs' hash, read by Python
//
// The build id versions everything a saved notebook could keep: the root CSS class
// (`dx-<id>`), the anywidget id (which names the <style> element anywidget fills) and the
// module itself, so an old widget state restored from a notebook never styles or drives the
// installed explorer.
//
//   node build.mjs            build
//   node build.mjs --check    exit 1 when the built files do not match the sources
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = join(HERE, '..', 'deltaexplore', 'widgets', 'static');

function files(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const p = join(dir, name);
      return statSync(p).isDirectory() ? files(p) : [p];
    });
}

/** Hash of every input of the bundle: sources, styles, the lock file and this script. */
export function sourceHash() {
  const h = createHash('sha256');
  const inputs = [...files(join(HERE, 'src')), join(HERE, 'package-lock.json'), join(HERE, 'build.mjs')];
  for (const f of inputs) {
    h.update(relative(HERE, f).replaceAll('\\', '/'));
    h.update('\0');
    h.update(readFileSync(f));
    h.update('\0');
  }
  return h.digest('hex');
}

function check() {
  const meta = join(OUT, 'build.json');
  if (!existsSync(meta)) {
    console.error('explorer front end not built: run `make frontend` (or `npm run build` in frontend/)');
    process.exit(1);
  }
  const built = JSON.parse(readFileSync(meta, 'utf8'));
  if (built.sources !== sourceHash()) {
    console.error('explorer front end is out of date with frontend/src: run `make frontend`');
    process.exit(1);
  }
  console.log(`explorer front end up to date (build ${built.id})`);
}

/**
 * Vega's SVG renderer names its gradients and clip paths `gradient_0`, `clip1`, ... from counters
 * of its module, and the bundle is evaluated once per explorer view: two views on a page drew
 * `url(#gradient_0)` from one definition, and a legend's gradient vanished when the first view's
 * definition sat in a hidden tab. The counters get a prefix drawn when the module is evaluated.
 */
const uniqueSvgIds = {
  name: 'unique-svg-ids',
  setup(b) {
    b.onLoad({ filter: /vega-scenegraph[\\/]build[\\/]vega-scenegraph\.js$/ }, (args) => {
      let text = readFileSync(args.path, 'utf8');
      const patches = [
        ["'gradient_' + gradient_id++", "'gradient_' + DXE_SVG_PREFIX + gradient_id++"],
        ["'clip' + clip_id++", "'clip' + DXE_SVG_PREFIX + clip_id++"],
      ];
      for (const [from, to] of patches) {
        if (!text.includes(from)) throw new Error(`vega-scenegraph changed: "${from}" not found (unique-svg-ids)`);
        text = text.replace(from, to);
      }
      text = `const DXE_SVG_PREFIX = Math.random().toString(36).slice(2, 8) + '_';\n${text}`;
      return { contents: text, loader: 'js' };
    });
  },
};

async function build() {
  const esbuild = await import('esbuild');
  const sources = sourceHash();
  const id = sources.slice(0, 10);
  const root = `dx-${id}`;
  mkdirSync(OUT, { recursive: true });
  const js = await esbuild.build({
    entryPoints: [join(HERE, 'src', 'index.ts')],
    bundle: true,
    format: 'esm',
    target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
    minify: true,
    legalComments: 'none',
    write: false,
    define: { __DX_BUILD__: JSON.stringify(id), 'process.env.NODE_ENV': '"production"' },
    logLevel: 'warning',
    plugins: [uniqueSvgIds],
  });
  const css = await esbuild.build({
    entryPoints: [join(HERE, 'src', 'explorer.css')],
    bundle: true,
    minify: true,
    write: false,
    target: ['chrome100', 'firefox100', 'safari15'],
    logLevel: 'warning',
  });
  const code = new TextDecoder().decode(js.outputFiles[0].contents);
  // the sources style `.dx-root`: the built rules apply to this build's root class only
  const style = new TextDecoder().decode(css.outputFiles[0].contents).replaceAll('.dx-root', `.${root}`);
  if (/https?:\/\/(?!www\.w3\.org\/)[a-z]/i.test(style)) throw new Error('explorer.css must not reference the network');
  writeFileSync(join(OUT, 'explorer.js'), code);
  writeFileSync(join(OUT, 'explorer.css'), style);
  writeFileSync(
    join(OUT, 'build.json'),
    JSON.stringify({ id, root_class: root, sources, js_bytes: code.length, css_bytes: style.length }, null, 2) + '\n',
  );
  console.log(`explorer front end built: ${id} (${(code.length / 1024).toFixed(0)} KiB JS, ${(style.length / 1024).toFixed(1)} KiB CSS)`);
}

if (process.argv.includes('--check')) check();
else await build();
