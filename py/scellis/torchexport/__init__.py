"""Stage: export. A program handed to PyTorch: model.py (scellis.torchexport.model), train.py, its weights,
data and epoch orders, and a manifest linking back (scellis.torchexport.bundle)."""
