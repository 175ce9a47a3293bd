//! Network namespaces as test hosts (being written).
