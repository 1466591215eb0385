// Labels over the drawing, in both modes: an HTML layer above the canvas. Each frame projects
// the labelled nodes to the screen and places their labels greedily in priority order (the
// selected entry first): below the node, else above, right or left; a label that would overlap
// one already placed is hidden, and every label is kept inside the stage (never cut at an edge).
import { Vector3 } from "three";

const GAP = 6;
const EDGE = 4;

export class LabelLayer {
  constructor(stage, getGraph, getMode) {
    this.stage = stage;
    this.getGraph = getGraph;
    this.getMode = getMode;
    this.layer = document.createElement("div");
    this.layer.className = "kbx-labels";
    this.layer.id = "kbx-labels";
    stage.append(this.layer);
    this.items = [];
    this.top = 0; // height of the bar at the top of the stage: labels stay below it
    this.vec = new Vector3();
    const frame = () => {
      this.paint();
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  }

  // items: [{id, text, title, kind: "lit" | "selected" | "community"}] in priority order.
  set(items, nodesById) {
    this.layer.innerHTML = "";
    this.nodesById = nodesById;
    this.items = items.map((item) => {
      const el = document.createElement("div");
      el.className = `kbx-label ${item.kind}`;
      el.dataset.id = item.id;
      el.textContent = item.text;
      el.title = item.title || item.text;
      el.hidden = true;
      this.layer.append(el);
      return { ...item, el, w: 0, h: 0 };
    });
    for (const item of this.items) {
      item.el.hidden = false;
      item.w = item.el.offsetWidth;
      item.h = item.el.offsetHeight;
      item.el.hidden = true;
    }
  }

  project(node, width, height) {
    const graph = this.getGraph();
    if (this.getMode() === "3d") {
      if (!graph.camera) return null;
      this.vec.set(node.x || 0, node.y || 0, node.z || 0).project(graph.camera());
      if (this.vec.z > 1 || this.vec.z < -1) return null; // behind the camera
      return { x: (this.vec.x + 1) / 2 * width, y: (1 - this.vec.y) / 2 * height };
    }
    return graph.graph2ScreenCoords(node.x || 0, node.y || 0);
  }

  paint() {
    const graph = this.getGraph();
    if (!graph || !this.items.length) return;
    const width = this.stage.clientWidth;
    const height = this.stage.clientHeight;
    const placed = [];
    for (const item of this.items) {
      const node = this.nodesById ? this.nodesById.get(item.id) : null;
      const p = node ? this.project(node, width, height) : null;
      const onStage = p && p.x >= 0 && p.x <= width && p.y >= this.top && p.y <= height;
      const spot = onStage ? this.place(item, p, placed, width, height) : null;
      if (!spot) {
        item.el.hidden = true;
        continue;
      }
      placed.push({ x: spot.x, y: spot.y, w: item.w, h: item.h });
      item.el.hidden = false;
      item.el.style.transform = `translate(${Math.round(spot.x)}px, ${Math.round(spot.y)}px)`;
    }
  }

  place(item, p, placed, width, height) {
    const { w, h } = item;
    const candidates = [
      [p.x - w / 2, p.y + GAP],
      [p.x - w / 2, p.y - GAP - h],
      [p.x + GAP, p.y - h / 2],
      [p.x - GAP - w, p.y - h / 2],
    ];
    for (const [cx, cy] of candidates) {
      const x = Math.min(Math.max(cx, EDGE), width - w - EDGE);
      const y = Math.min(Math.max(cy, this.top + EDGE), height - h - EDGE);
      const clash = placed.some((r) => x < r.x + r.w && r.x < x + w && y < r.y + r.h && r.y < y + h);
      if (!clash) return { x, y };
    }
    return null;
  }

  // For tests: the labels on screen with their boxes relative to the stage.
  visible() {
    return this.items.filter((item) => !item.el.hidden).map((item) => {
      const box = item.el.getBoundingClientRect();
      const stage = this.stage.getBoundingClientRect();
      return {
        id: item.id,
        kind: item.kind,
        text: item.el.textContent,
        x: box.left - stage.left,
        y: box.top - stage.top,
        w: box.width,
        h: box.height,
      };
    });
  }
}

export function shortText(text, max = 46) {
  const s = String(text ?? "");
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}
