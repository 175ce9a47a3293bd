//! # pmi: the process-management interface (placeholder, being written)
