pub mod generative;

pub use generative::GenerativeChains;
