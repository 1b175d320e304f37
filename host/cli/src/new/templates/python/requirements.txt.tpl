# The build toolchain only: componentize-py bundles CPython (compiled to WebAssembly), the
# bindings generator and the component linker in one wheel, with no dependencies.
componentize-py==0.25.1
