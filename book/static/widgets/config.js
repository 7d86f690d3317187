// Point require.js at this folder for the vendored widget bundle, so that the fonts its
// modules load resolve here rather than next to the page that shows a widget.
(function () {
  var here = document.currentScript.src.replace(/\/[^/]*$/, "");
  require.config({
    paths: {"@jupyter-widgets": here, "@jupyter-widgets/html-manager/dist": here},
  });
})();
