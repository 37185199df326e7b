// RUN: rm -f %t.missing.mlir
// RUN: not spyre-opt %t.missing.mlir 2>&1 | filecheck %s

// A reproducer command run after its input was cleaned away: the path, the reason and what
// to do, not xDSL's traceback from open().
// CHECK: error: cannot read {{.*}}.missing.mlir: No such file or directory; check the path
// CHECK-NOT: Traceback
