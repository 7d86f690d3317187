// The scoreboard's table: click a heading to sort by it (again to reverse), type in the
// filter box to keep the claims whose cells contain every word typed. A claim's
// diagnosis row (class iclr25-diagnosis) moves and hides with its claim, and its text
// is not searched. No library, no network.
document.addEventListener("DOMContentLoaded", () => {
  const table = document.querySelector("table.iclr25-scoreboard");
  const filter = document.querySelector("input.iclr25-filter");
  if (!table) return;
  const body = table.tBodies[0];
  const claims = [...body.rows].filter(r => !r.classList.contains("iclr25-diagnosis"));
  const diagnosis = new Map(claims.map(r => {
    const next = r.nextElementSibling;
    return [r, next && next.classList.contains("iclr25-diagnosis") ? next : null];
  }));
  const key = (row, col) => row.cells[col].textContent.trim().toLowerCase();
  table.querySelectorAll("thead th").forEach((th, col) => {
    th.addEventListener("click", () => {
      const up = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("thead th").forEach(h => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      const sorted = [...claims].sort((a, b) =>
        key(a, col).localeCompare(key(b, col), undefined, {numeric: true}) * (up ? 1 : -1));
      sorted.forEach(r => {
        body.appendChild(r);
        if (diagnosis.get(r)) body.appendChild(diagnosis.get(r));
      });
    });
  });
  if (filter) filter.addEventListener("input", () => {
    const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    claims.forEach(r => {
      const text = [...r.cells].map(c => c.textContent).join(" ").toLowerCase();
      r.hidden = !words.every(w => text.includes(w));
      if (diagnosis.get(r)) diagnosis.get(r).hidden = r.hidden;
    });
  });
});
