// The admin page: each action asks once, in the browser's dialog, before its form is sent.
// A form's data-confirm is its question, with {field} filled from the form (the profile or
// role chosen). Without script the server asks on a page of its own instead.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (event) => {
      const question = form.dataset.confirm.replace(/\{(\w+)\}/g, (whole, name) => {
        const field = form.elements.namedItem(name);
        return field && "value" in field && field.value ? field.value : whole;
      });
      if (!window.confirm(question)) {
        event.preventDefault();
        return;
      }
      const confirmed = form.elements.namedItem("confirm");
      if (confirmed) confirmed.value = "yes";
    });
  });
});
