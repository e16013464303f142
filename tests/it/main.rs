//! The integration tests, one binary (STYLE: one test binary with modules).

mod extract_docs;
