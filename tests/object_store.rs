//! Logs on an S3-compatible object store (`treelog::object_store`), against a real store on
//! the loopback interface: `scripts/seaweedfs start DIR` prints the settings, and the tests
//! run when `TREELOG_S3_TEST_ENDPOINT` is set (they are skipped, with a notice, otherwise).
