//! Progress and interruption, as every long stage (counting, training, minbpe's training)
//! reports them: the caller passes a [`Control`] down, and each stage calls it between units
//! of work.  At the bottom of the crate so that counting and training both stand on it.

use crate::error::Result;

/// Progress and interruption: called between units of work.  `Err` stops the work (Ctrl-C).
pub trait Control: Sync {
    fn progress(&self, stage: &str, done: u64, total: u64) -> Result<()>;
}

/// No progress output, never interrupted.
pub struct Silent;

impl Control for Silent {
    fn progress(&self, _: &str, _: u64, _: u64) -> Result<()> {
        Ok(())
    }
}
