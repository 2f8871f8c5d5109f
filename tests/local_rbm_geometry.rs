#![cfg(not(target_arch = "wasm32"))]
//! Local-patch geometry against the numbers of Raina, Madhavan & Ng (2009) §5 and Table 3, and
//! geometry errors that name the flag to change.

use deepbelief::local_rbm::stack::{plan_stack, LayerSpec};
use deepbelief::local_rbm::{CoverLists, Geometry};

#[test]
fn table_3_shapes_have_the_papers_unit_and_weight_counts() {
    // 144²: 20736 × 49152, "28 million" free parameters; 192²: 36864 × 92928, "54 million".
    let small = Geometry::new(144, 144, 1, 24, 8, 192, false).unwrap();
    assert_eq!((small.positions(), small.n_visible(), small.n_hidden()), (256, 20736, 49152));
    assert_eq!(small.weight_count(), 28_311_552);
    let large = Geometry::new(192, 192, 1, 24, 8, 192, false).unwrap();
    assert_eq!((large.positions(), large.n_visible(), large.n_hidden()), (484, 36864, 92928));
    assert_eq!(large.weight_count(), 53_526_528);
    // Tied: one bank whatever the positions.
    let tied = Geometry::new(144, 144, 1, 24, 1, 192, true).unwrap();
    assert_eq!((tied.positions(), tied.weight_count(), tied.hidden_bias_count()), (121 * 121, 24 * 24 * 192, 192));
}

#[test]
fn raina_four_layer_stack_has_the_papers_unit_counts() {
    let specs = LayerSpec::parse_list("local:24:8:256,local:4:2:128,local:3:1:128,dense:1024").unwrap();
    let plan = plan_stack(160, 160, 1, &specs).unwrap();
    let units: Vec<usize> = std::iter::once(plan[0].n_visible()).chain(plan.iter().map(|g| g.n_hidden())).collect();
    assert_eq!(units, vec![25_600, 82_944, 8_192, 4_608, 1_024]);
    let weights: usize = plan.iter().map(|g| g.weight_count()).sum();
    // 47.8M + 33.6M + 5.3M + 4.7M: the paper's 96M does not give its patch sizes above layer 1.
    assert_eq!(weights, 47_775_744 + 33_554_432 + 5_308_416 + 4_718_592);
    assert_eq!(plan[1].channels, 256);
    assert_eq!(plan[3].positions(), 1);
}

#[test]
fn cover_lists_count_the_patches_over_each_pixel() {
    // 10 wide, patches of 4 at stride 2: columns 0–1 in one patch, 2–7 in two, 8–9 in one.
    let g = Geometry::new(10, 10, 1, 4, 2, 3, false).unwrap();
    let cover = CoverLists::new(&g);
    let per_axis = [1, 1, 2, 2, 2, 2, 2, 2, 1, 1];
    for r in 0..10 {
        for c in 0..10 {
            assert_eq!(cover.covering(r * 10 + c).len(), per_axis[r] * per_axis[c], "pixel ({r}, {c})");
        }
    }
}

#[test]
fn geometry_errors_name_the_flag() {
    let error = |r| match r {
        Err(e) => e,
        Ok(g) => panic!("accepted {g:?}"),
    };
    assert!(error(Geometry::new(20, 20, 1, 24, 8, 192, false)).starts_with("--patch:"));
    assert!(error(Geometry::new(144, 144, 1, 24, 0, 192, false)).starts_with("--stride:"));
    let gap = error(Geometry::new(144, 144, 1, 8, 12, 16, false));
    assert!(gap.starts_with("--stride:") && gap.contains("no patch covers"), "{gap}");
    let edge = error(Geometry::new(150, 150, 1, 24, 8, 16, false));
    assert!(edge.starts_with("--stride:") && edge.contains("--image-size 144 or 152"), "{edge}");
    assert!(error(Geometry::new(0, 5, 1, 1, 1, 1, false)).starts_with("--image-size:"));
    assert!(error(Geometry::new(8, 8, 0, 2, 2, 1, false)).starts_with("--channels:"));
    assert!(error(Geometry::new(8, 8, 1, 2, 2, 0, false)).starts_with("--hidden-per-patch:"));
    let huge = error(Geometry::new(4096, 4096, 3, 64, 8, 4096, false));
    assert!(huge.starts_with("--hidden-per-patch") && huge.contains("weights"), "{huge}");
    let layer = plan_stack(144, 144, 1, &LayerSpec::parse_list("local:24:8:192,local:20:1:8").unwrap()).unwrap_err();
    assert!(layer.starts_with("--layers, layer 2") && layer.contains("--patch:"), "{layer}");
    assert!(LayerSpec::parse("conv:3:1").unwrap_err().starts_with("--layers: 'conv:3:1'"));
}
