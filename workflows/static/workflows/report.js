/* The gap report page: pan and zoom of the flow diagram, and a confirmation step for the
   decisions that close a finding. Plain JavaScript, no dependencies, loaded as a static file
   (the site's CSP allows no inline script). Without it the page still works: the diagram
   scrolls and the server refuses a decision without a comment. */
(function () {
  "use strict";

  var MIN_SCALE = 0.1;
  var MAX_SCALE = 8;
  var STEP = 1.25;

  function setupDiagram(panel) {
    var svg = panel.querySelector("svg.flow");
    if (!svg) return;
    var box = svg.viewBox && svg.viewBox.baseVal;
    if (!box || !box.width || !box.height) return;
    var full = { x: box.x, y: box.y, w: box.width, h: box.height };
    var view = { x: full.x, y: full.y, w: full.w, h: full.h };
    panel.classList.add("zoomable");
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    svg.setAttribute("preserveAspectRatio", "xMidYMid meet");

    function apply() {
      svg.setAttribute("viewBox", [view.x, view.y, view.w, view.h].join(" "));
      var scale = full.w / view.w;
      var out = document.getElementById("diagram-scale");
      if (out) out.textContent = Math.round(scale * 100 * fitRatio()) + "%";
      panel.dataset.scale = String(scale);
    }

    function fitRatio() {
      // Size of one drawing unit on screen when the whole drawing fits.
      var rect = svg.getBoundingClientRect();
      return Math.min(rect.width / full.w, rect.height / full.h) || 1;
    }

    function unitsPerPixel() {
      var rect = svg.getBoundingClientRect();
      return Math.max(view.w / rect.width, view.h / rect.height) || 1;
    }

    function zoom(factor, cx, cy) {
      var scale = full.w / (view.w / factor);
      if (scale < MIN_SCALE || scale > MAX_SCALE) return;
      var rect = svg.getBoundingClientRect();
      var upp = unitsPerPixel();
      // The drawing point under (cx, cy) stays under it.
      var offX = (rect.width * upp - view.w) / 2;
      var offY = (rect.height * upp - view.h) / 2;
      var px = view.x - offX + (cx - rect.left) * upp;
      var py = view.y - offY + (cy - rect.top) * upp;
      view.w /= factor;
      view.h /= factor;
      view.x = px - (px - view.x) / factor;
      view.y = py - (py - view.y) / factor;
      apply();
    }

    function centre() {
      var rect = svg.getBoundingClientRect();
      return [rect.left + rect.width / 2, rect.top + rect.height / 2];
    }

    function fit() {
      view = { x: full.x, y: full.y, w: full.w, h: full.h };
      apply();
    }

    function actual() {
      // One drawing unit per screen pixel (the drawing at its own size), top left.
      var rect = svg.getBoundingClientRect();
      view = { x: full.x, y: full.y, w: rect.width, h: rect.height };
      apply();
    }

    var bar = document.getElementById("diagram-controls");
    if (bar) {
      bar.hidden = false;
      bar.addEventListener("click", function (event) {
        var button = event.target.closest("button[data-zoom]");
        if (!button) return;
        var c = centre();
        var what = button.dataset.zoom;
        if (what === "in") zoom(STEP, c[0], c[1]);
        else if (what === "out") zoom(1 / STEP, c[0], c[1]);
        else if (what === "fit") fit();
        else if (what === "actual") actual();
      });
    }

    panel.addEventListener(
      "wheel",
      function (event) {
        event.preventDefault();
        zoom(event.deltaY < 0 ? STEP : 1 / STEP, event.clientX, event.clientY);
      },
      { passive: false }
    );

    var drag = null;
    var moved = false;
    panel.addEventListener("pointerdown", function (event) {
      if (event.button !== 0) return;
      drag = { x: event.clientX, y: event.clientY, vx: view.x, vy: view.y, upp: unitsPerPixel() };
      moved = false;
    });
    window.addEventListener("pointermove", function (event) {
      if (!drag) return;
      var dx = event.clientX - drag.x;
      var dy = event.clientY - drag.y;
      if (!moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      if (!moved) panel.classList.add("dragging");
      moved = true;
      view.x = drag.vx - dx * drag.upp;
      view.y = drag.vy - dy * drag.upp;
      apply();
    });
    window.addEventListener("pointerup", function () {
      drag = null;
      panel.classList.remove("dragging");
    });
    // A drag that ends on a node is a pan, not a click on its link.
    panel.addEventListener(
      "click",
      function (event) {
        if (moved) {
          event.preventDefault();
          event.stopPropagation();
          moved = false;
        }
      },
      true
    );
    fit();
    window.kbDiagram = {
      zoom: function (factor) {
        var c = centre();
        zoom(factor, c[0], c[1]);
      },
      fit: fit,
      view: function () {
        return { x: view.x, y: view.y, w: view.w, h: view.h, full: full };
      },
    };
  }

  function describe(action) {
    return action === "accept" ? "accept the risk of" : "mark as resolved";
  }

  function setupDecisions() {
    document.querySelectorAll("form.finding-decision").forEach(function (form) {
      var note = form.querySelector(".confirm");
      var confirmed = false;
      form.addEventListener("submit", function (event) {
        var button = event.submitter;
        var action = button && button.value;
        if (action !== "accept" && action !== "resolve") return;
        if (confirmed) return;
        event.preventDefault();
        var comment = form.querySelector("textarea[name=comment]");
        if (!comment.value.trim()) {
          note.textContent = "Say why in the comment box first: it is kept with the decision.";
          note.hidden = false;
          note.className = "confirm needs-comment";
          comment.focus();
          return;
        }
        note.textContent = "";
        note.className = "confirm asking";
        var text = document.createElement("span");
        text.textContent =
          "Really " + describe(action) + " finding #" + form.dataset.for + "? ";
        var yes = document.createElement("button");
        yes.type = "button";
        yes.className = "primary";
        yes.dataset.confirm = action;
        yes.textContent = action === "accept" ? "Yes, accept the risk" : "Yes, resolve it";
        var no = document.createElement("button");
        no.type = "button";
        no.textContent = "Cancel";
        note.append(text, yes, " ", no);
        note.hidden = false;
        yes.addEventListener("click", function () {
          confirmed = true;
          var field = document.createElement("input");
          field.type = "hidden";
          field.name = "action";
          field.value = action;
          form.append(field);
          form.submit();
        });
        no.addEventListener("click", function () {
          note.hidden = true;
          note.textContent = "";
        });
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var panel = document.getElementById("diagram");
    if (panel) setupDiagram(panel);
    setupDecisions();
  });
})();
