//! Watching a crew from the main thread, step by step: progress lines, the sampler's
//! helpers, the epoch driver's preparations.

use std::time::Duration;

use super::{Live, Step, StepOutcome};

/// Observes a crew from the main thread: progress lines, samplers.
pub trait Monitor {
    /// Step `index` is next: the last chance to prepare what it uses (while every
    /// worker waits). An error stops the crew with that message.
    fn before_step(&mut self, _index: usize, _step: &Step) -> Result<(), String> {
        Ok(())
    }
    /// A step is about to start on every thread.
    fn step_started(&mut self, _step: &Step, _live: &Live) {}
    /// Called about once a second while a step runs.
    fn tick(&mut self, _step: &Step, _elapsed: Duration, _live: &Live) {}
    /// A step ended on every thread, with what it produced.
    fn step_finished(&mut self, _step: &Step, _elapsed: Duration, _outcome: &StepOutcome) {}
}

/// A monitor that does nothing.
pub struct Quiet;
impl Monitor for Quiet {}

/// Two monitors observing one crew, the first told first (a failure of the first's
/// `before_step` is the crew's).
pub struct Both<'a>(pub &'a mut dyn Monitor, pub &'a mut dyn Monitor);

impl Monitor for Both<'_> {
    fn before_step(&mut self, index: usize, step: &Step) -> Result<(), String> {
        self.0.before_step(index, step)?;
        self.1.before_step(index, step)
    }
    fn step_started(&mut self, step: &Step, live: &Live) {
        self.0.step_started(step, live);
        self.1.step_started(step, live);
    }
    fn tick(&mut self, step: &Step, elapsed: Duration, live: &Live) {
        self.0.tick(step, elapsed, live);
        self.1.tick(step, elapsed, live);
    }
    fn step_finished(&mut self, step: &Step, elapsed: Duration, outcome: &StepOutcome) {
        self.0.step_finished(step, elapsed, outcome);
        self.1.step_finished(step, elapsed, outcome);
    }
}
