// Starts Swagger UI on /api/docs (a file, because the pages allow no inline script).
"use strict";
window.addEventListener("DOMContentLoaded", () => {
  window.SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true});
});
