// A shared library that is not a noether plugin: no `noether_plugin` symbol.
extern "C" int some_other_function(void) { return 42; }
