//! Pipeline groups (`--pipeline N`): the N sessions that share one connection to a
//! server, each keeping at most one request in flight, so the connection carries up to
//! N at once. Replies come back in the order the requests went out; a session's own
//! requests stay in its order because it waits for each reply before its next request.
//!
//! The crew makes one [`Pipeline`] per connection of a thread and opens each of the
//! group's sessions with [`Store::pipelined_session`](crate::engine::Store::pipelined_session).
//! What the sessions share (the socket, its buffers, the queue of awaited replies) is
//! the engine's own type, kept here by [`Pipeline::shared`] and made by the first
//! session that asks for it.

use std::any::Any;
use std::sync::{Arc, Mutex};

/// One connection's pipeline group: its depth and the engine's shared state.
pub struct Pipeline {
    depth: usize,
    shared: Mutex<Option<Arc<dyn Any + Send + Sync>>>,
}

impl Pipeline {
    /// A group of `depth` sessions (at least 1).
    pub fn new(depth: usize) -> Arc<Pipeline> {
        Arc::new(Pipeline {
            depth: depth.max(1),
            shared: Mutex::new(None),
        })
    }

    /// How many sessions share the connection.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The group's state of type `T`, made by `make` for the first session that asks.
    /// Called when a session opens, never per operation.
    pub fn shared<T: Any + Send + Sync>(&self, make: impl FnOnce() -> T) -> Arc<T> {
        let mut slot = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(have) = slot.as_ref().and_then(|s| Arc::clone(s).downcast::<T>().ok()) {
            return have;
        }
        let made = Arc::new(make());
        *slot = Some(made.clone());
        made
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_session_of_a_group_gets_the_state_the_first_one_made() {
        let group = Pipeline::new(4);
        let first = group.shared(|| 7u32);
        let second = group.shared(|| 9u32);
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(*second, 7);
        assert_eq!(group.depth(), 4);
        assert_eq!(Pipeline::new(0).depth(), 1);
    }
}
