pub mod gibbs;

pub use gibbs::GibbsChains;
