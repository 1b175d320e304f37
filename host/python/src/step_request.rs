//! [`StepRequest`]: a step's model request kept as the host's own value until Python reads
//! it.
//!
//! The request is most of a step's result (every message and every tool schema: about 70 KB
//! on the reference deployment), and building it as Python objects costs more than a third of
//! the step itself (docs/benchmarks.md §7). An agent reads it once, usually to send it: as
//! Python objects for a provider's SDK (`to_python`) or as the JSON text of the HTTP body
//! (`to_json`, written by the host without Python objects in between). Either is built when
//! asked for, not as part of the step's answer.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use prompt_host_serve::StepAnswer;

/// A step's model request, held by the host until it is read.
#[pyclass(frozen, module = "prompt_host._native")]
pub struct StepRequest {
    /// The step's whole answer (the request is its largest part); `None` only while dropped.
    answer: Option<Box<StepAnswer>>,
}

impl StepRequest {
    /// The request of `answer`, which it keeps until it is dropped.
    pub(crate) fn new(answer: Box<StepAnswer>) -> Self {
        Self {
            answer: Some(answer),
        }
    }

    fn request(&self) -> PyResult<&prompt_host::session::ModelRequest> {
        self.answer
            .as_ref()
            .map(|a| &a.outcome.request)
            .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("the step's request is gone"))
    }
}

#[pymethods]
impl StepRequest {
    /// The request as Python objects (dicts, lists, strings, numbers): a new copy each call.
    fn to_python<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        pythonize::pythonize(py, self.request()?).map_err(|e| {
            pyo3::exceptions::PyRuntimeError::new_err(format!(
                "cannot hand the step's request to Python: {e}"
            ))
        })
    }

    /// The request as compact JSON text (UTF-8), as the provider's HTTP request carries it;
    /// written with the GIL released.
    fn to_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let request = self.request()?;
        let text = py.detach(|| serde_json::to_vec(request)).map_err(|e| {
            pyo3::exceptions::PyRuntimeError::new_err(format!(
                "cannot write the step's request as JSON: {e}"
            ))
        })?;
        Ok(PyBytes::new(py, &text))
    }
}

impl Drop for StepRequest {
    fn drop(&mut self) {
        // Freed on the thread that lets go of it, which allocated most of it (another thread
        // freeing it costs a wake-up and leaves the allocator's cross-thread frees for this
        // one to collect), with the GIL released meanwhile.
        if let Some(answer) = self.answer.take() {
            Python::attach(|py| py.detach(move || drop(answer)));
        }
    }
}
