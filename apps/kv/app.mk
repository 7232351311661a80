# apps/kv keeps its data on the data disk (include/vireo/store.h): the
# block path is linked in (the Makefile's storage block).
STORAGE := 1
