//! Bulk work on a store that is not a workload's units: an index of its keys and
//! dumps of its data ([`data`]), extends planned from the index ([`extend`]), and what
//! a crew's workers do for them in a step ([`steps`]). Epochs (`run::epochs`) use it
//! to grow values and to build fresh stores; the crew runs its steps.

pub mod data;
pub mod extend;
pub mod steps;
