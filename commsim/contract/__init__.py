"""The contract between the engine and its plugins: the interfaces a Reduction and a Simulator implement, and the
values that pass between them."""
