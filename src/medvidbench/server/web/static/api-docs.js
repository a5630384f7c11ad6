// Starts Swagger UI on /api/docs (a file, because the pages allow no inline script).
"use strict";
window.addEventListener("DOMContentLoaded", () => {
  window.SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    // Deep links put a link inside each operation's expand button (an interactive element
    // inside another, which screen readers and keyboards cannot use); without them the links
    // have no address and are plain text.
    deepLinking: false,
    // Swagger UI titles the page h1 and its operation groups h3 (schemas h4): name the levels
    // that follow its h1, so that the outline skips none.
    onComplete: () => {
      document.querySelectorAll("#swagger-ui h3.opblock-tag").forEach((h) => h.setAttribute("aria-level", "2"));
      document.querySelectorAll("#swagger-ui section.models h4").forEach((h) => h.setAttribute("aria-level", "2"));
    },
  });
});
