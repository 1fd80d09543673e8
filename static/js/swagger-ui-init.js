/* Starts Swagger UI on /api/docs/ (templates/drf_spectacular/swagger_ui.html). A static file because the
   Content-Security-Policy forbids inline scripts; the schema URL and the CSRF token come from data-
   attributes of #swagger-ui. "Try it out" uses the page's session, so unsafe methods send the CSRF token. */
(function () {
  "use strict";

  var root = document.getElementById("swagger-ui");
  if (!root || typeof SwaggerUIBundle === "undefined") return;
  var csrfHeader = root.dataset.csrfHeader;
  var csrfToken = root.dataset.csrfToken;
  var SAFE_METHODS = ["GET", "HEAD", "OPTIONS", "TRACE", undefined];

  function addCsrfToken(request) {
    if (SAFE_METHODS.indexOf(request.method) === -1 && request.credentials === "same-origin") {
      request.headers[csrfHeader] = csrfToken;
    }
    return request;
  }

  window.ui = SwaggerUIBundle({
    url: root.dataset.schemaUrl,
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    requestInterceptor: addCsrfToken,
  });
})();
