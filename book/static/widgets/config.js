// Loaded after require.js and before the widget bundle (see nb_ipywidgets_js in _config.yml).
(function () {
  // Point require.js at this folder for the vendored widget bundle, so that the fonts
  // its modules load resolve here rather than next to the page that shows a widget.
  var here = document.currentScript.src.replace(/\/[^/]*$/, "");
  require.config({
    paths: {"@jupyter-widgets": here, "@jupyter-widgets/html-manager/dist": here},
  });

  // The widget bundle typesets labels with the MathJax 2 API (MathJax.Hub.Queue), but
  // the book loads MathJax 3, which has no Hub: give every MathJax object the page sets
  // a Hub whose Queue forwards to MathJax 3's typesetPromise.
  var hub = {Queue: function (job) {
    var mathjax = window.MathJax;
    if (mathjax && mathjax.typesetPromise && job && job[2]) {
      mathjax.typesetPromise([job[2]]).catch(function () {});
    }
  }};
  function withHub(value) {
    if (value && typeof value === "object" && !value.Hub) value.Hub = hub;
    return value;
  }
  var current = withHub(window.MathJax);
  Object.defineProperty(window, "MathJax", {
    configurable: true,
    get: function () { return current; },
    set: function (value) { current = withHub(value); },
  });
})();
