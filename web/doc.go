// Package web is evalrun's read-only viewer: an [http.Handler] that shows the
// runs of a store in a browser (runs list, run page, items table, item
// detail, comparison of two runs, experiments and their variants side by
// side) and serves the same data as JSON under /api/.
//
// It uses net/http routing patterns, html/template (every user-supplied
// string is escaped) and assets embedded in the binary: the pages make no
// request to any other origin, carry a strict Content-Security-Policy (no
// inline script) and work without JavaScript, except the live refresh of a
// running run's counts.
//
// Security: [CheckAddr] refuses to bind a non-loopback address without a
// token. With a token set ([Options].Token), every request must carry it,
// as "Authorization: Bearer <token>" or as the cookie set by a first visit
// to any page with ?token=<token>; without a token, only requests whose Host
// is a loopback name are served (a DNS-rebinding guard). Every route is GET
// (HEAD): nothing changes state.
//
// Performance: a run's aggregates come from [report.FromStore] built
// without item rows, once per finished run and at most every
// [Options].RefreshInterval for a running one, and kept in memory; items are
// paged through [evalrun.RunStore.ScanResults], keeping only the page in
// memory however large the run.
package web
