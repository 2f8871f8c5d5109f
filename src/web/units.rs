//! The run's units as the worker drives them: each call decides where the unit trains (a
//! device epoch while the layer is on the device, else the CPU), moves each new layer onto the
//! device when the run uses it, and says what to post, the notices of a layer kept on the CPU
//! or a lost device included. The worker only posts. The run itself is the engine's
//! (`engine::stack::StackRun`, as the CLI's `StackRun::unit`); the device epoch takes the layer
//! out of it for the await (`begin_device_epoch`), so the views can draw meanwhile.

use super::training::{loaded_not_trained, no_run, on_cpu_threads};
use super::{js_error, to_js, Playground};
use crate::backend::cpu::CpuBackend;
use crate::engine::stack::{StackEvent, StackRun};
use crate::train::{BatchEvent, GreedyEvent};
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// What a unit did (`unit`: its event, as `step()` or `step_batch()` return it, or `fell_back`)
/// and the events the worker posts for it, in order.
#[derive(Serialize)]
struct Unit<'a, E: Serialize> {
    unit: &'a E,
    post: Vec<Posted<'a, E>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Posted<'a, E: Serialize> {
    Training(&'a E),
    Page(PageEvent),
}

/// The worker's own events about where the run trains.
#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum PageEvent {
    Notice { message: String },
    Backend { backend: &'static str, threads: usize, reason: String },
    Busy { message: &'static str },
}

/// The first device epoch of a run builds the pipelines, which a browser may take tens of
/// seconds to compile: the page says so instead of a bar frozen at 0%.
const COMPILING: &str = "Compiling the WebGPU kernels… (the first epoch on the GPU waits for them)";

#[wasm_bindgen]
impl Playground {
    /// One unit of greedy work: a layer's initialisation, one epoch (on the device while the
    /// layer is there), or closing a layer. Resolves to `{unit, post}`: `unit` the event of
    /// `step()`, or `{event: "fell_back", layer, message, resumed_at}` when the device was lost
    /// (the layer goes on on the CPU from its last checkpoint); `post` the events to post in
    /// order: the unit's (not `finished`), and `notice` + `backend` when a new layer stays on
    /// the CPU or the device is lost. A layer that starts goes onto the device when
    /// `choose_backend` chose WebGPU for this run.
    pub fn unit(&mut self) -> js_sys::Promise {
        if !self.gpu.borrow().run.place_layers || !self.training_on_gpu() {
            return settled(self.cpu_unit(|stack, data| stack.step(&CpuBackend, data), event_of_unit));
        }
        let stack = self.stack.clone();
        let state = self.gpu.clone();
        let threads = self.cpu_thread_count();
        wasm_bindgen_futures::future_to_promise(async move {
            let epoch = stack.borrow_mut().as_mut().ok_or_else(no_run)?.begin_device_epoch().map_err(|e| JsError::new(&e))?;
            let done = epoch.run().await;
            let event = match stack.borrow_mut().as_mut() {
                Some(stack) => stack.end_device_epoch(done).map_err(js_error)?,
                None => None,
            };
            let event = event.ok_or_else(|| JsError::new("the run was replaced while its GPU epoch ran"))?;
            let mut state = state.borrow_mut();
            let post = match &event {
                StackEvent::FellBack(fell_back) => {
                    // The failed device goes; a later run makes a new one.
                    state.engine = None;
                    state.chains = None;
                    state.run.place_layers = false;
                    vec![
                        Posted::Page(PageEvent::Notice { message: format!("WebGPU failed ({}); continuing on the CPU", fell_back.message) }),
                        Posted::Page(PageEvent::Backend { backend: "cpu", threads, reason: "WebGPU failed".into() }),
                    ]
                }
                StackEvent::Greedy(_) => {
                    state.run.epochs_done += 1;
                    if state.run.epochs_done == state.run.lose_after {
                        if let Some(engine) = &state.engine {
                            engine.simulate_loss();
                        }
                    }
                    vec![Posted::Training(&event)]
                }
            };
            Ok(to_js(&Unit { unit: &event, post })?)
        })
    }

    /// The event to post before awaiting the next `unit()`, or `null`: `busy` before the run's
    /// first device epoch, whose kernels may take long to compile.
    pub fn before_unit(&self) -> Result<JsValue, JsError> {
        let first_device_epoch = {
            let state = self.gpu.borrow();
            state.run.place_layers && state.run.epochs_done == 0
        };
        if first_device_epoch && self.training_on_gpu() {
            return to_js(&PageEvent::Busy { message: COMPILING });
        }
        Ok(JsValue::NULL)
    }

    /// One batch of the layer in training, or `step()`'s unit of work when no epoch is to
    /// train; `{unit, post}` as `unit()`, with `unit` the event of `step_batch()`. A layer on
    /// the device moves to the CPU first, exactly (its checkpoint), and continues there; a layer
    /// that starts goes onto the device as in `unit()`.
    pub fn batch_unit(&mut self) -> Result<JsValue, JsError> {
        self.cpu_unit(|stack, data| stack.step_batch(&CpuBackend, data), event_of_batch)
    }

    /// Whether the layer in training is on the device with epochs to go (the chains run there
    /// too then).
    pub fn training_on_gpu(&self) -> bool {
        self.stack.borrow().as_ref().is_some_and(StackRun::on_device)
    }

    /// Testing hook for the fall-back path: the device is destroyed, as a driver reset or a lost
    /// adapter would, after `epochs` device epochs of the run started last (0: never).
    pub fn simulate_gpu_loss_after(&mut self, epochs: u32) {
        self.gpu.borrow_mut().run.lose_after = epochs;
    }
}

impl Playground {
    /// A unit on the CPU (`train`), then the new layer onto the device when the run uses it.
    fn cpu_unit<E: Serialize>(
        &mut self,
        train: impl FnOnce(&mut StackRun, &crate::data::Dataset) -> Result<E, crate::train::TrainError>,
        greedy_of: impl Fn(&E) -> Option<&GreedyEvent>,
    ) -> Result<JsValue, JsError> {
        let event = {
            let mut stack = self.stack.borrow_mut();
            let stack = stack.as_mut().ok_or_else(no_run)?;
            let data = self.training_data.as_ref().ok_or_else(loaded_not_trained)?;
            on_cpu_threads(self.cpu_threads, || train(stack, data)).map_err(js_error)?
        };
        let greedy = greedy_of(&event);
        let mut post = Vec::new();
        if !matches!(greedy, Some(GreedyEvent::Finished)) {
            post.push(Posted::Training(&event));
        }
        if matches!(greedy, Some(GreedyEvent::LayerStarted { .. })) && self.gpu.borrow().run.place_layers {
            if let Some(reason) = self.place_layer() {
                self.gpu.borrow_mut().run.place_layers = false;
                post.push(Posted::Page(PageEvent::Notice { message: format!("This layer trains on the CPU: {reason}") }));
                post.push(Posted::Page(PageEvent::Backend { backend: "cpu", threads: self.cpu_thread_count(), reason }));
            }
        }
        to_js(&Unit { unit: &event, post })
    }

    /// Moves the layer just started onto the device; `Some(reason)` when it stays on the CPU
    /// (unsupported settings, no device, a device that refused or lost a layer of this run).
    fn place_layer(&self) -> Option<String> {
        let mut stack = self.stack.borrow_mut();
        let (Some(stack), Some(data)) = (stack.as_mut(), self.training_data.as_ref()) else { return Some("no model is being trained".into()) };
        let Some(engine) = self.gpu.borrow().device() else { return Some("no WebGPU device".into()) };
        match stack.place_on_device(&engine, data) {
            Ok(true) => None,
            Ok(false) => Some("the GPU refused or lost an earlier layer of this run".into()),
            Err(reason) => Some(reason),
        }
    }

    /// The CPU threads the run trains on, as the `backend` event reports them.
    pub(super) fn cpu_thread_count(&self) -> usize {
        // A thread that has become a one-thread pool reports 1 here.
        if self.cpu_threads == 1 { 1 } else { rayon::current_num_threads() }
    }
}

fn event_of_unit(event: &StackEvent) -> Option<&GreedyEvent> {
    match event {
        StackEvent::Greedy(greedy) => Some(greedy),
        StackEvent::FellBack(_) => None,
    }
}

fn event_of_batch(event: &BatchEvent) -> Option<&GreedyEvent> {
    match event {
        BatchEvent::Greedy(greedy) => Some(greedy),
        BatchEvent::Batch(_) => None,
    }
}

/// A promise settled with a synchronous unit's outcome.
fn settled(outcome: Result<JsValue, JsError>) -> js_sys::Promise {
    match outcome {
        Ok(value) => js_sys::Promise::resolve(&value),
        Err(error) => js_sys::Promise::reject(&error.into()),
    }
}
