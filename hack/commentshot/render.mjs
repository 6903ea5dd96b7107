// render.mjs turns fleetwave PR comments (Markdown files) into HTML pages as GitHub shows them: GitHub-flavoured
// Markdown (marked, GFM on; raw HTML such as <details> passed through as GitHub allows it), GitHub's own
// stylesheet (github-markdown-css), and ```mermaid blocks drawn by Mermaid in the browser. Each page records, once
// Mermaid is done, what it rendered in <body data-...> attributes for the browser check to read from the DOM.
//
// usage: node render.mjs OUT_DIR COMMENT.md...   (writes OUT_DIR/<name>.html and OUT_DIR/mermaid.min.js)
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Marked } from "marked";

const here = dirname(fileURLToPath(import.meta.url));
const [out, ...files] = process.argv.slice(2);
if (!out || files.length === 0) {
  console.error("usage: node render.mjs OUT_DIR COMMENT.md...");
  process.exit(2);
}
mkdirSync(out, { recursive: true });
copyFileSync(join(here, "node_modules/mermaid/dist/mermaid.min.js"), join(out, "mermaid.min.js"));
const css = readFileSync(join(here, "node_modules/github-markdown-css/github-markdown-light.css"), "utf8");

const escape = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const marked = new Marked({
  gfm: true,
  renderer: {
    code({ text, lang }) {
      if (lang === "mermaid") return `<pre class="mermaid">${escape(text)}</pre>\n`;
      return `<pre><code class="language-${escape(lang || "")}">${escape(text)}</code></pre>\n`;
    },
  },
});

for (const file of files) {
  const md = readFileSync(file, "utf8");
  const body = marked.parse(md);
  const page = `<!doctype html>
<html><head><meta charset="utf-8"><title>${escape(basename(file))}</title>
<style>${css}
body { margin: 0; background: #fff; }
.markdown-body { box-sizing: border-box; max-width: 980px; padding: 24px 32px; border: 1px solid #d0d7de; border-radius: 6px; margin: 16px; }
</style></head>
<body data-state="loading"><article class="markdown-body">
${body}
</article>
<script src="mermaid.min.js"></script>
<script>
mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
mermaid.run({ querySelector: "pre.mermaid" }).then(
  () => {
    document.body.dataset.diagrams = String(document.querySelectorAll("pre.mermaid svg").length);
    document.body.dataset.state = "done";
  },
  (err) => { document.body.dataset.state = "error: " + String(err && err.message || err).split("\\n")[0]; },
);
</script>
</body></html>
`;
  writeFileSync(join(out, basename(file).replace(/\.md$/, "") + ".html"), page);
}
