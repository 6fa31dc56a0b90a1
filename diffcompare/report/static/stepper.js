// The seed graphs' steppers: forward then backward, one node at a time.  The steps were
// recorded in Python from a real backward pass (diffcompare/viz/steps.py) and sit in each
// stepper's data-steps attribute as JSON; this script only displays them (textContent only).
(function () {
  "use strict";
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function savedList(saved) {
    var ul = el("ul", "saved");
    if (!saved.length) ul.appendChild(el("li", "muted", "saved nothing"));
    saved.forEach(function (s) {
      var shape = s.shape.length ? "(" + s.shape.join("×") + ")" : "scalar";
      ul.appendChild(el("li", null, "saved " + s.name + " = " + (s.value !== null ? s.value : shape) +
        "  —  " + shape + " " + s.dtype + ", " + s.bytes + " B, version " +
        (s.version === null ? "?" : s.version)));
    });
    return ul;
  }
  function flat(data) {
    var out = [];
    data.forward.forEach(function (s, i) {
      out.push({phase: "forward", k: i + 1, n: data.forward.length, s: s});
    });
    data.backward.forEach(function (s, i) {
      out.push({phase: "backward", k: i + 1, n: data.backward.length, s: s});
    });
    return out;
  }
  function show(panel, step, data) {
    panel.textContent = "";
    var s = step.s;
    panel.appendChild(el("p", "step-head", step.phase + " " + step.k + " of " + step.n + ": " + s.node));
    if (step.phase === "forward") {
      panel.appendChild(el("p", null, "made; its next_functions: " +
        (s.next.map(function (n) { return n === null ? "None" : n; }).join(", ") || "none")));
      panel.appendChild(savedList(s.saved));
      return;
    }
    panel.appendChild(el("p", "incoming", "gradient in: " + s.incoming.join(", ") +
      (step.k === 1 ? "   (backward starts from " + data.gradient + ")" : "")));
    if (s.accumulate) {
      panel.appendChild(el("p", "accumulate", "adds " + s.accumulate.adds + " to " +
        s.accumulate.variable + ".grad, which is now " + s.accumulate.grad));
      return;
    }
    panel.appendChild(savedList(s.saved));
    var ul = el("ul", "sends");
    s.sends.forEach(function (e, i) {
      ul.appendChild(el("li", null, "sends to next_functions[" + i + "] = (" +
        (e.to === null ? "None" : e.to) + ", " + e.nr + "): " + (e.value === null ? "nothing" : e.value)));
    });
    panel.appendChild(ul);
  }
  document.querySelectorAll(".stepper[data-steps]").forEach(function (box) {
    var data = JSON.parse(box.getAttribute("data-steps"));
    var steps = flat(data), at = 0;
    var bar = el("div", "stepper-bar");
    var first = el("button", null, "« start"), prev = el("button", null, "◀ back"),
        next = el("button", null, "next ▶"), count = el("span", "stepper-count");
    [first, prev, next].forEach(function (b) { b.type = "button"; bar.appendChild(b); });
    bar.appendChild(count);
    var panel = el("div", "stepper-panel");
    panel.setAttribute("aria-live", "polite");
    box.appendChild(bar);
    box.appendChild(panel);
    var fig = box.closest("figure");
    function mark(key) {          // the step's node, outlined in the drawing above
      if (!fig) return;
      fig.querySelectorAll("g.node.step-current").forEach(function (g) { g.classList.remove("step-current"); });
      if (!key) return;
      fig.querySelectorAll("g.node").forEach(function (g) {
        if (g.getAttribute("data-key") === key) g.classList.add("step-current");
      });
    }
    function go(k) {
      at = Math.max(0, Math.min(steps.length - 1, k));
      mark(steps[at].s.key);
      show(panel, steps[at], data);
      count.textContent = "step " + (at + 1) + " of " + steps.length + " (← → keys)";
      prev.disabled = at === 0;
      next.disabled = at === steps.length - 1;
    }
    first.addEventListener("click", function () { go(0); });
    prev.addEventListener("click", function () { go(at - 1); });
    next.addEventListener("click", function () { go(at + 1); });
    box.addEventListener("keydown", function (ev) {
      if (ev.key === "ArrowRight") { go(at + 1); ev.preventDefault(); }
      else if (ev.key === "ArrowLeft") { go(at - 1); ev.preventDefault(); }
    });
    box.tabIndex = 0;
    box.hidden = false;
    go(0);
  });
})();
