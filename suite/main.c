#include <stdio.h>
int main(void) { puts("band-smoke: under construction"); return 2; }
