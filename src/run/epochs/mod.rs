//! Growing values in epochs: YCSB-IVS's method as one command on any engine.
//!
//! After the workload loads the store, each epoch runs an extend phase (appends to
//! keys chosen by the extend distribution, planned by the harness from the store's key
//! index so the value cap is exact) and then a measured run phase of the workload. The
//! run phase is measured in up to four modes:
//!
//! - `main`: on the store that lived through every extend;
//! - `clean`: on a fresh store of the same engine loaded from a dump of the main store
//!   taken right after the extend phase (same logical data, no history);
//! - `average`: on a fresh store with the same keys, every value of the average length;
//! - `spread`: on a fresh store of the same volume in records of the initial length,
//!   loaded by the workload itself with its size scaled (many more records).
//!
//! Each epoch's extend phase and each mode's run phase is its own reported point. The
//! dump and the fresh stores' loads are timed and reported with their point (as its
//! seed), never inside the run phase. With `--repeat`, the whole sequence repeats on
//! fresh stores, and each point also gets the mean and 95% interval of its figures
//! over the repeats ([`crate::result::intervals`]).

mod driver;
mod modes;

pub(super) use driver::run_cell;
