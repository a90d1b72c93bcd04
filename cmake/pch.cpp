// Anchor for the precompiled LibTorch header shared by the runtime areas.
