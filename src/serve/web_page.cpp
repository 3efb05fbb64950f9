// The page `sieve serve` shows at GET /: one self-contained HTML document (no CDN, works
// offline) that calls the JSON API from the browser.
#include "serve/web_page.h"

namespace sieve::serve {

const std::string& web_page() {
  static const std::string page = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>sieve</title>
<style>
  body { font: 15px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1100px; }
  h1 { font-size: 20px; margin: 0 0 12px; }
  form { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; margin-bottom: 14px; }
  input[type=text] { flex: 1 1 420px; font-size: 16px; padding: 6px 8px; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #ddd; vertical-align: top; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
  tr.hit { cursor: pointer; }
  tr.hit:hover { background: #f4f7ff; }
  .accepted { color: #0a7d28; font-weight: 600; }
  .rejected { color: #b3261e; font-weight: 600; }
  #status { color: #666; margin: 8px 0; }
  #map { margin-top: 16px; overflow: auto; max-height: 80vh; border: 1px solid #ddd; }
  #map svg { display: block; }
</style>
</head>
<body>
<h1>sieve: two-stage search</h1>
<form id="f">
  <input id="q" type="text" placeholder="query, e.g. the dog bit the man" autofocus>
  <label>mode <select id="mode"><option value="">default</option><option>bm25</option><option>dense</option><option>hybrid</option></select></label>
  <label><input id="gate" type="checkbox"> gate</label>
  <label><input id="rerank" type="checkbox"> rerank</label>
  <label>k <input id="k" type="number" value="10" min="1" max="100" style="width:4em"></label>
  <label id="keybox" hidden>API key <input id="key" type="password" style="width:8em"></label>
  <button type="submit">search</button>
</form>
<div id="status"></div>
<table id="results" hidden>
  <thead><tr><th>#</th><th>document</th><th>stage 1 rank</th><th>stage 1 score</th><th>verifier score</th><th>decision</th></tr></thead>
  <tbody></tbody>
</table>
<div id="map"></div>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
function headers() {
  const h = { "Content-Type": "application/json" };
  if ($("key").value) h["Authorization"] = "Bearer " + $("key").value;
  return h;
}
function text(tag, s, cls) {
  const e = document.createElement(tag);
  e.textContent = s;
  if (cls) e.className = cls;
  return e;
}
async function search() {
  const query = $("q").value.trim();
  if (!query) return;
  const body = { query, k: Number($("k").value) || 10, verifier: true, gate: $("gate").checked,
                 rerank: $("rerank").checked, with_text: true };
  if ($("mode").value) body.mode = $("mode").value;
  $("status").textContent = "searching...";
  $("map").textContent = "";
  const r = await fetch("/v1/search", { method: "POST", headers: headers(), body: JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) { $("status").textContent = "error: " + j.error.message; return; }
  const res = j.results[0];
  const tb = $("results").querySelector("tbody");
  tb.textContent = "";
  res.hits.forEach((h) => {
    const tr = document.createElement("tr");
    tr.className = "hit";
    tr.dataset.id = h.id;
    const doc = (h.title ? h.title + " " : "") + h.text;
    const cell = text("td", doc.length > 220 ? doc.slice(0, 220) + " ..." : doc);
    cell.title = doc;
    tr.append(text("td", h.rank, "num"), cell,
              text("td", h.stage1_rank, "num"), text("td", h.stage1_score.toFixed(3), "num"),
              text("td", h.verifier_score.toFixed(3), "num"),
              text("td", h.accepted ? "accepted" : "rejected", h.accepted ? "accepted" : "rejected"));
    tr.addEventListener("click", () => showMap(query, doc));
    tb.append(tr);
  });
  $("results").hidden = res.hits.length === 0;
  let status = `${res.hits.length} results (${j.mode}${body.gate ? ", gated" : ""}${body.rerank ? ", reranked" : ""}), ${res.timings.total_ms.toFixed(1)} ms`;
  if (body.gate && res.hits.length === 0)
    status += ": the gate rejected every candidate stage 1 found (none says the same as the query); untick \"gate\" to see them with their verifier scores";
  if (res.note) status += ". " + res.note;
  $("status").textContent = status;
}
async function showMap(query, candidate) {
  const u = "/v1/explain.svg?query=" + encodeURIComponent(query) + "&candidate=" + encodeURIComponent(candidate);
  const r = await fetch(u, { headers: headers() });
  $("map").innerHTML = r.ok ? await r.text() : "";
}
$("f").addEventListener("submit", (e) => { e.preventDefault(); search(); });
// The key field only when the server asks for one (its /v1/info answers 401 without a key).
fetch("/v1/info").then((r) => { if (r.status === 401) $("keybox").hidden = false; }).catch(() => {});
const params = new URLSearchParams(location.search);
if (params.get("q")) {
  $("q").value = params.get("q");
  $("gate").checked = params.get("gate") === "1";
  $("rerank").checked = params.get("rerank") === "1";
  search().then(() => { if (params.get("map") === "1") document.querySelector("tr.hit")?.click(); });
}
</script>
</body>
</html>
)HTML";
  return page;
}

}  // namespace sieve::serve
