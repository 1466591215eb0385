// The sidebar's controls: search-as-you-type over the drawn nodes (entries, or communities in
// the overview) and the filter checkboxes with their counts.
import { esc } from "./panel.js";

const SHOWN = 12;

// Search-as-you-type: the drawn nodes first (entries, or communities in the overview), then
// the bank's own search (``remote(q)`` → [{id, title, kind}]) for entries that are not drawn;
// picking one of those opens its neighbourhood.
export function setupSearch(input, list, getNodes, pick, remote) {
  let asked = 0;
  let timer = null;
  const option = (n, what, drawn) => {
    const li = document.createElement("li");
    li.setAttribute("role", "option");
    li.dataset.id = n.id;
    if (!drawn) li.dataset.remote = "true";
    const where = drawn ? "" : ' <span class="kbx-count kbx-notdrawn">not drawn</span>';
    li.innerHTML = `${esc(n.title)} <span class="kbx-count">${esc(what)}</span>${where}`;
    li.addEventListener("mousedown", (ev) => {
      ev.preventDefault();
      list.innerHTML = "";
      input.value = n.title;
      pick(n);
    });
    list.append(li);
  };
  const show = () => {
    const q = input.value.trim().toLowerCase();
    list.innerHTML = "";
    clearTimeout(timer);
    const ticket = ++asked;
    if (!q) return;
    const hits = [];
    for (const n of getNodes()) {
      const title = n.title.toLowerCase();
      const at = title.indexOf(q);
      if (at >= 0 || n.id.startsWith(q)) hits.push([at < 0 ? 0 : at, -(n.size ?? n.degree), n]);
      if (hits.length > 400) break;
    }
    hits.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const local = hits.slice(0, SHOWN).map(([, , n]) => n);
    local.forEach((n) => option(n, n.size !== undefined ? `${n.size} entries` : n.kind, true));
    if (!remote || local.length >= SHOWN) return;
    list.dataset.searching = "true";
    timer = setTimeout(async () => {
      let found = [];
      try {
        found = await remote(input.value.trim());
      } catch (err) {
        found = [];
      }
      if (ticket !== asked) return;
      delete list.dataset.searching;
      const listed = new Set(local.map((n) => n.id));
      for (const n of found) {
        if (listed.has(n.id) || list.children.length >= SHOWN) continue;
        listed.add(n.id);
        option(n, n.kind, false);
      }
    }, 180);
  };
  input.addEventListener("input", show);
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") {
      ev.preventDefault();
      const first = list.querySelector("li");
      if (first) first.dispatchEvent(new MouseEvent("mousedown"));
    }
  });
  input.addEventListener("blur", () => setTimeout(() => { list.innerHTML = ""; }, 150));
}

export function buildFilterBoxes(box, values, set, counts, onChange) {
  box.innerHTML = "";
  [...values].sort().forEach((value) => {
    set.add(value);
    const label = document.createElement("label");
    label.className = "kbx-check";
    const input = document.createElement("input");
    input.type = "checkbox";
    input.checked = true;
    input.dataset.value = value;
    input.addEventListener("change", () => {
      if (input.checked) set.add(value); else set.delete(value);
      onChange();
    });
    label.append(input, ` ${value} `);
    const count = document.createElement("span");
    count.className = "kbx-count";
    count.textContent = counts.get(value) || 0;
    label.append(count);
    box.append(label);
  });
}

export function tally(items, key) {
  const counts = new Map();
  items.forEach((item) => counts.set(item[key], (counts.get(item[key]) || 0) + 1));
  return counts;
}
