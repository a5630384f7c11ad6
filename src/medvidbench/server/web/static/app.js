// A little behaviour on top of pages that work without it: theme, live status, compare chart.
"use strict";

(function theme() {
  const saved = localStorage.getItem("mvb-theme");
  if (saved) document.documentElement.dataset.theme = saved;
  document.addEventListener("DOMContentLoaded", () => {
    const button = document.getElementById("theme");
    if (!button) return;
    button.addEventListener("click", () => {
      const dark = window.matchMedia("(prefers-color-scheme: dark)").matches;
      const now = document.documentElement.dataset.theme || (dark ? "dark" : "light");
      const next = now === "dark" ? "light" : "dark";
      document.documentElement.dataset.theme = next;
      localStorage.setItem("mvb-theme", next);
    });
  });
})();

document.addEventListener("DOMContentLoaded", () => {
  // Submission page: follow the status until it is final, then show the new page.
  const timeline = document.getElementById("timeline");
  if (timeline && timeline.dataset.final === "no") {
    const id = timeline.dataset.submission;
    const seen = timeline.dataset.status;
    const poll = async () => {
      try {
        const response = await fetch(`/api/v1/submissions/${id}`, {headers: {Accept: "application/json"}});
        if (response.ok) {
          const body = await response.json();
          if (body.status !== seen) { window.location.reload(); return; }
        }
      } catch (e) { /* network hiccup: try again */ }
      setTimeout(poll, 1000);
    };
    setTimeout(poll, 1000);
  }

  // Compare page: typing filters the list at once (the Find button does it without JS);
  // the chart is drawn from the benchmark's API.
  const filter = document.getElementById("pick-filter");
  if (filter) {
    const apply = () => {
      const needle = filter.value.trim().toLowerCase();
      document.querySelectorAll("#pick-list label.pick").forEach((label) => {
        const ticked = label.querySelector("input").checked;
        label.hidden = Boolean(needle) && !ticked && !label.dataset.search.includes(needle);
      });
    };
    filter.addEventListener("input", apply);
    filter.addEventListener("keydown", (e) => { if (e.key === "Enter") e.preventDefault(); });
    apply();
  }
  const chart = document.getElementById("chart");
  if (chart && window.Plotly && chart.dataset.entries) {
    const slug = encodeURIComponent(chart.dataset.slug);
    fetch(`/api/v1/benchmarks/${slug}/compare?entries=${encodeURIComponent(chart.dataset.entries)}`)
      .then((r) => r.json())
      .then((body) => {
        // The server puts every value on 0-1 with 1 the best (from the metric table), so the
        // chart names no metric and knows no scale.
        const keys = body.metrics;
        const names = keys.map((k) => body.columns[k] || k);
        const traces = body.entries.map((e) => ({
          type: "bar", name: e.model_name, x: names,
          y: keys.map((k) => e.normalised[k] ?? null),
        }));
        window.Plotly.newPlot(chart, traces, {barmode: "group",
          xaxis: {title: {text: "metric"}},
          yaxis: {range: [0, 1], title: {text: "normalised score (1 = best)"}},
          margin: {t: 20, b: 110}, legend: {orientation: "h", y: -0.35}},
          {responsive: true, displaylogo: false});
      });
  }
});

// ---- Scroll boxes (issue 22): a table wider than the screen scrolls inside its box, never the
// page. A box that overflows can be focused (so the keyboard can scroll it), is a named region,
// and says above itself that it scrolls; one that fits says nothing.
(function scrollBoxes() {
  const hintFor = (box) => {
    let hint = box.previousElementSibling;
    if (!hint || !hint.classList.contains("scroll-hint")) {
      hint = document.createElement("p");
      hint.className = "scroll-hint";
      hint.setAttribute("aria-hidden", "true"); // the region's name says it to screen readers
      hint.textContent = "⇆ Wider than the screen: scroll the table sideways";
      box.before(hint);
    }
    return hint;
  };
  const nameOf = (box) => {
    const caption = box.querySelector("caption");
    let heading = box.previousElementSibling;
    while (heading && !/^H[1-6]$/.test(heading.tagName)) heading = heading.previousElementSibling;
    return box.dataset.label || (caption && caption.textContent.trim())
      || (heading && heading.textContent.trim()) || "Table";
  };
  const mark = () => {
    document.querySelectorAll(".scroll").forEach((box) => {
      const wide = box.scrollWidth > box.clientWidth + 1;
      box.classList.toggle("scrolls", wide);
      hintFor(box).hidden = !wide;
      if (wide) {
        box.tabIndex = 0;
        box.setAttribute("role", "region");
        if (!box.hasAttribute("aria-label")) box.setAttribute("aria-label", `${nameOf(box)} (scrolls sideways)`);
      }
    });
  };
  document.addEventListener("DOMContentLoaded", mark);
  window.addEventListener("resize", mark);
  window.addEventListener("load", mark);
})();
