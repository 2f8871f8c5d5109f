//! Saving and loading models, and the DEEP.LOG and activation exports.
