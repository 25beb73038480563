// Parses Mermaid sources with Mermaid's own parser (the one GitHub's renderer runs).
// stdin: a JSON array of diagram sources; stdout: a JSON array of
// {ok, error?, type?, vertices?, edges?, subgraphs?} in the same order.
import { JSDOM } from 'jsdom';

const { window } = new JSDOM('');
// Mermaid sanitizes labels with DOMPurify, which needs a DOM: give it jsdom's before Mermaid loads.
globalThis.window = window;
globalThis.document = window.document;
const { default: mermaid } = await import('mermaid');
mermaid.initialize({ startOnLoad: false });

let input = '';
for await (const chunk of process.stdin) input += chunk;
const results = [];
for (const text of JSON.parse(input)) {
  try {
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
    const db = diagram.db;
    results.push({
      ok: true,
      type: diagram.type,
      vertices: db.getVertices().size,
      edges: db.getEdges().length,
      subgraphs: db.getSubGraphs().length,
    });
  } catch (e) {
    results.push({ ok: false, error: String(e.message || e) });
  }
}
process.stdout.write(JSON.stringify(results));
