// Faultline's kind node image helpers (docs/kind.md "The real node image"): programs the node
// image needs that no Debian package has and no registry is asked for. A module of its own so
// that ../go.mod (and the control plane's cache key) stays as it is.
module faultline.dev/upstream/node

go 1.25.0
