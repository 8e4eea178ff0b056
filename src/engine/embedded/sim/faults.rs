//! The injected faults: which call each strikes, and the single-key verbs that apply
//! them and count those that change what the store holds or answers.

use super::SimSession;
use crate::engine::{EngineError, EngineResult, Existed, ReadBuf};

/// The faults, as indexes into [`SimSession::calls`].
#[derive(Debug, Clone, Copy)]
pub(super) enum Fault {
    DropWrite,
    StaleRead,
    CorruptRead,
    Resurrect,
    Fail,
}

impl SimSession {
    /// True when this call is the one in N that `fault` strikes.
    pub(super) fn strikes(&mut self, fault: Fault) -> bool {
        let f = &self.shape.faults;
        let n = match fault {
            Fault::DropWrite => f.drop_writes,
            Fault::StaleRead => f.stale_reads,
            Fault::CorruptRead => f.corrupt_reads,
            Fault::Resurrect => f.resurrect,
            Fault::Fail => f.fail,
        };
        if n == 0 {
            return false;
        }
        let c = &mut self.calls[fault as usize];
        *c += 1;
        c.is_multiple_of(n)
    }

    /// The `fail` fault's error, when it strikes this call.
    pub(super) fn failing(&mut self) -> EngineResult<()> {
        if self.strikes(Fault::Fail) {
            self.shape.count(Fault::Fail);
            return Err(EngineError::other(format!(
                "engine sim: injected fault (fail={})",
                self.shape.faults.fail
            )));
        }
        Ok(())
    }

    /// True when `key` holds a value, left in `self.scratch`. An error reads as a
    /// value, so a fault whose effect cannot be known is counted rather than missed.
    fn holds(&mut self, key: &[u8]) -> bool {
        self.inner.get(key, &mut self.scratch).unwrap_or(true)
    }

    pub(super) fn put_faulty(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        self.failing()?;
        if self.strikes(Fault::DropWrite) {
            if !(self.holds(key) && self.scratch.as_slice() == val) {
                self.shape.count(Fault::DropWrite);
            }
            return Ok(());
        }
        if self.shape.faults.stale_reads > 0 && self.inner.get(key, &mut self.scratch)? {
            let mut previous = self.shape.previous.lock().unwrap_or_else(|p| p.into_inner());
            previous.insert(key.to_vec(), self.scratch.to_vec());
        }
        self.inner.put(key, val)
    }

    pub(super) fn get_faulty(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        self.failing()?;
        let hit = self.inner.get(key, out)?;
        if hit && self.strikes(Fault::StaleRead) {
            let previous = self.shape.previous.lock().unwrap_or_else(|p| p.into_inner());
            // Only an older value that differs is a wrong answer.
            if let Some(old) = previous.get(key).filter(|old| old.as_slice() != out.as_slice()) {
                out.set(old);
                self.shape.count(Fault::StaleRead);
            }
        }
        if hit && self.strikes(Fault::CorruptRead) {
            let mut bytes = out.to_vec();
            if let Some(last) = bytes.last_mut() {
                *last ^= 0x01;
                out.set(&bytes);
                self.shape.count(Fault::CorruptRead);
            }
        }
        Ok(hit)
    }

    pub(super) fn del_faulty(&mut self, key: &[u8]) -> EngineResult<Existed> {
        self.failing()?;
        if self.strikes(Fault::Resurrect) {
            if self.holds(key) {
                self.shape.count(Fault::Resurrect);
            }
            return Ok(Existed::Yes);
        }
        self.inner.del(key)
    }
}
