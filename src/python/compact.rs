//! The ladder's share arithmetic (`compact::fill`): converts and delegates.

use pyo3::prelude::*;

use crate::compact;

/// Equal shares of `total` tokens over texts of `sizes` tokens, smallest first (a text under
/// its share stays whole); see `compact::fill::equal_shares`.
#[pyfunction]
#[pyo3(signature = (sizes, total, /))]
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
pub fn _equal_shares(sizes: Vec<usize>, total: i64) -> Vec<usize> {
    compact::equal_shares(&sizes, total)
}

/// `shares` with the largest cut text (share under its size) giving up `over` tokens; None
/// when nothing is cut or it would keep less than one token. See `compact::fill::give_way`.
#[pyfunction]
#[pyo3(signature = (shares, sizes, over, /))]
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
pub fn _give_way(mut shares: Vec<usize>, sizes: Vec<usize>, over: usize) -> Option<Vec<usize>> {
    compact::give_way(&mut shares, &sizes, over).then_some(shares)
}
