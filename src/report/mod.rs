pub mod image_grid;
