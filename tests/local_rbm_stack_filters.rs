#![cfg(not(target_arch = "wasm32"))]
//! The filters of a stack's upper layers (`local_rbm::filters::stack_filters_picture`, the
//! page's view of layers above the first): each unit's weights projected to the image through
//! the layers below equal the product of the layers' dense embeddings (`to_dense`,
//! `W₁ · W₂ · … · w`, in f64), the receptive field holds all of the projection and is no larger
//! than it, and a one-layer stack draws exactly `filters_picture`.

use deepbelief::local_rbm::filters::{filters_picture, projected_filters, receptive_field, stack_filters_picture};
use deepbelief::local_rbm::stack::{plan_stack, LayerSpec};
use deepbelief::local_rbm::LocalRbm;
use deepbelief::model::VisibleUnits;

fn stack(size: usize, specs: &str, channels: usize) -> Vec<LocalRbm> {
    let plan = plan_stack(size, size, channels, &LayerSpec::parse_list(specs).unwrap()).unwrap();
    plan.iter()
        .enumerate()
        .map(|(k, g)| {
            let units = if k == 0 { VisibleUnits::Gaussian } else { VisibleUnits::Bernoulli };
            LocalRbm::initialise(*g, units, &vec![0.3; g.n_visible()], 7 + k as u64)
        })
        .collect()
}

/// Column `unit` of the top layer's dense weights, brought down through the dense layers below
/// (f64): one value per input pixel and channel.
fn dense_projection(layers: &[LocalRbm], unit: usize) -> Vec<f64> {
    let dense: Vec<_> = layers.iter().map(|l| l.to_dense()).collect();
    let top = dense.last().unwrap();
    let mut current: Vec<f64> = (0..top.n_visible).map(|i| top.weights[i * top.n_hidden + unit] as f64).collect();
    for below in dense[..dense.len() - 1].iter().rev() {
        current = (0..below.n_visible).map(|i| (0..below.n_hidden).map(|m| below.weights[i * below.n_hidden + m] as f64 * current[m]).sum()).collect();
    }
    current
}

fn check_projection(size: usize, specs: &str, channels: usize) {
    let layers = stack(size, specs, channels);
    let top = &layers.last().unwrap().geometry;
    let shown = top.hidden_per_patch.min(3);
    for position in 0..top.positions() {
        let field = receptive_field(&layers, position);
        assert!(field.row + field.rows <= size && field.col + field.cols <= size, "{specs}: position {position}'s field {field:?} leaves the {size}² image");
        let ours = projected_filters(&layers, position, shown);
        assert_eq!(ours.len(), shown * field.rows * field.cols);
        for j in 0..shown {
            let reference = dense_projection(&layers, position * top.hidden_per_patch + j);
            let scale = reference.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            assert!(scale > 0.0);
            let (mut inside_rows, mut inside_cols) = (vec![false; field.rows], vec![false; field.cols]);
            for r in 0..size {
                for c in 0..size {
                    let value = (0..channels).map(|ch| reference[(r * size + c) * channels + ch]).sum::<f64>() / channels as f64;
                    let inside = (field.row..field.row + field.rows).contains(&r) && (field.col..field.col + field.cols).contains(&c);
                    let any = (0..channels).any(|ch| reference[(r * size + c) * channels + ch] != 0.0);
                    if !inside {
                        assert!(!any, "{specs}: unit {j} at position {position} reaches pixel ({r}, {c}) outside its field {field:?}");
                        continue;
                    }
                    let (fr, fc) = (r - field.row, c - field.col);
                    inside_rows[fr] |= any;
                    inside_cols[fc] |= any;
                    let got = ours[(j * field.rows + fr) * field.cols + fc] as f64;
                    assert!((got - value).abs() <= 1e-5 * scale, "{specs}: unit {j} at position {position}, pixel ({r}, {c}): {got} against {value} (scale {scale})");
                }
            }
            assert!(inside_rows.iter().all(|&x| x) && inside_cols.iter().all(|&x| x), "{specs}: the field {field:?} is larger than unit {j}'s projection at position {position}");
        }
    }
}

#[test]
fn projected_filters_are_the_dense_products_within_their_receptive_fields() {
    // Untied over untied: 12² → 5×5 × 3 → 2×2 × 2; a field spans 3 patches 2 apart: (3 − 1)·2 + 4 = 8 pixels.
    check_projection(12, "local:4:2:3,local:3:2:2", 1);
    // A tied layer over an untied one, stride 1, and two channels at the bottom.
    check_projection(10, "local:4:2:3,tied:2:1:2", 2);
    // Three layers, the top dense: its one position sees the whole image.
    check_projection(12, "local:4:2:3,local:3:1:2,dense:4", 1);
    let layers = stack(12, "local:4:2:3,local:3:1:2,dense:4", 1);
    assert_eq!(receptive_field(&layers, 0), deepbelief::local_rbm::filters::ReceptiveField { row: 0, col: 0, rows: 12, cols: 12 });
    let two = stack(12, "local:4:2:3,local:3:2:2", 1);
    assert_eq!(receptive_field(&two, 3), deepbelief::local_rbm::filters::ReceptiveField { row: 4, col: 4, rows: 8, cols: 8 });
}

#[test]
fn the_pictures_grid_is_the_top_layers_positions_and_one_layer_is_filters_picture() {
    let layers = stack(12, "local:4:2:3,local:3:2:2", 1);
    assert_eq!(stack_filters_picture(&layers[..1], 2), filters_picture(&layers[0], 2));
    // 2 × 2 cells, each 2 filters of 8 × 8 side by side (one-pixel gaps and frame), 3 px apart.
    let picture = stack_filters_picture(&layers, 2);
    let (cell_w, cell_h) = (2 * 9 + 1, 9 + 1);
    assert_eq!((picture.width, picture.height), (2 * (cell_w + 3) + 3, 2 * (cell_h + 3) + 3));
    // Tied top layer: one cell.
    let tied = stack(10, "local:4:2:3,tied:2:1:2", 1);
    let picture = stack_filters_picture(&tied, 1);
    let field = receptive_field(&tied, 0);
    assert_eq!((picture.width, picture.height), (field.cols + 2 + 6, field.rows + 2 + 6));
}
