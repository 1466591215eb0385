// The details panel: an entry with its edges, and the fold answer exactly as the agent reads
// it. Pure functions returning HTML; every entry is shown by its title (titleOf), never a bare id.

export function esc(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => ({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
  })[c]);
}

export function entryLink(id, text) {
  return `<a href="#${esc(id)}" class="kbx-go" data-id="${esc(id)}">${esc(text)}</a>`;
}

export function entryHtml(entry, adminUrl) {
  const edges = (entry.edges || []).map((e) => `<li class="kbx-edge">`
    + `<span class="kbx-rel">${e.direction === "out" ? "→" : "←"} ${esc(e.relation)}</span> `
    + `${entryLink(e.entry.id, e.entry.title)}`
    + (e.note ? `<div class="kbx-note">${esc(e.note)}</div>` : `<div class="kbx-note none">no note</div>`)
    + `</li>`).join("");
  const content = String(entry.content || "");
  return `<article class="kbx-entry" data-id="${esc(entry.id)}">
    <p class="kbx-meta">${esc(entry.kind)} · ${esc(entry.status)} · <code>${esc(entry.id)}</code></p>
    <h2>${esc(entry.title)}</h2>
    ${entry.summary ? `<p class="kbx-summary">${esc(entry.summary)}</p>` : ""}
    <p class="kbx-content">${esc(content.length > 600 ? `${content.slice(0, 599)}…` : content)}</p>
    <p><a class="kbx-button" href="${esc(adminUrl.replace("__ID__", encodeURIComponent(entry.id)))}">Open in admin</a></p>
    <h3>Edges (${(entry.edges || []).length})</h3>
    <ul class="kbx-edges">${edges || "<li class=\"kbx-hint\">No current edges.</li>"}</ul>
  </article>`;
}

export function answerIds(answer) {
  const ids = [];
  for (const r of answer.results || []) {
    ids.push(r.id);
    for (const item of r.related || []) ids.push(item.id);
    for (const item of r.neighbors || []) ids.push(item.id);
  }
  return ids;
}

function pointerHtml(item, titleOf) {
  const arrow = item.direction === "out" ? "→" : "←";
  const viaTitle = item.via ? item.via.title || titleOf(item.via.id) || item.via.id : "";
  const via = item.via ? ` <span class="kbx-via">via ${esc(viaTitle)}</span>` : "";
  return `<li class="kbx-pointer ${esc(item.kind)}">`
    + `<span class="kbx-rel">${arrow} ${esc(item.relation)}</span> `
    + `${entryLink(item.id, item.title || titleOf(item.id) || item.id)}${via}`
    + (item.note ? `<div class="kbx-note">${esc(item.note)}</div>` : "")
    + (item.summary ? `<div class="kbx-summary">${esc(item.summary)}</div>` : "")
    + `</li>`;
}

export function answerHtml(answer, titleOf) {
  const results = (answer.results || []).map((r) => `<li class="kbx-result" data-id="${esc(r.id)}">
      <div class="kbx-result-head"><span class="kbx-rank">${r.rank}</span>
        ${entryLink(r.id, r.title)} <span class="kbx-count">${esc(r.kind)} · ${Number(r.score).toFixed(3)}</span></div>
      ${r.summary ? `<div class="kbx-summary">${esc(r.summary)}</div>` : ""}
      ${(r.related || []).length ? `<div class="kbx-sub">Folded here</div><ul>${r.related.map((i) => pointerHtml(i, titleOf)).join("")}</ul>` : ""}
      ${(r.neighbors || []).length ? `<div class="kbx-sub">Neighbours</div><ul>${r.neighbors.map((i) => pointerHtml(i, titleOf)).join("")}</ul>` : ""}
    </li>`).join("");
  const s = answer.stats || {};
  return `<section class="kbx-answer">
    <p class="kbx-meta">The answer as the agent reads it</p>
    <h2>${esc(answer.query)}</h2>
    <p class="kbx-hint">pool ${s.pool ?? "?"} · ${s.groups ?? "?"} groups · ${s.folded ?? 0} folded · `
    + `${s.refilled ?? 0} refilled · ${s.neighbors ?? 0} neighbours · ${s.took_ms ?? "?"} ms</p>
    <ol class="kbx-results">${results || "<li>No results.</li>"}</ol>
  </section>`;
}

