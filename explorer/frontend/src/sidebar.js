// The sidebar's controls: search-as-you-type over the drawn nodes (entries, or communities in
// the overview) and the filter checkboxes with their counts.
import { esc } from "./panel.js";

export function setupSearch(input, list, getNodes, pick) {
  const show = () => {
    const q = input.value.trim().toLowerCase();
    list.innerHTML = "";
    if (!q) return;
    const hits = [];
    for (const n of getNodes()) {
      const title = n.title.toLowerCase();
      const at = title.indexOf(q);
      if (at >= 0 || n.id.startsWith(q)) hits.push([at < 0 ? 0 : at, -(n.size ?? n.degree), n]);
      if (hits.length > 400) break;
    }
    hits.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    hits.slice(0, 12).forEach(([, , n]) => {
      const li = document.createElement("li");
      li.setAttribute("role", "option");
      li.dataset.id = n.id;
      const what = n.size !== undefined ? `${n.size} entries` : n.kind;
      li.innerHTML = `${esc(n.title)} <span class="kbx-count">${esc(what)}</span>`;
      li.addEventListener("mousedown", (ev) => {
        ev.preventDefault();
        list.innerHTML = "";
        input.value = n.title;
        pick(n);
      });
      list.append(li);
    });
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
