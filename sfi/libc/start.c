/* Program entry for fault domains and native builds alike: the runtime (or
   the native _start) calls __sfi_start(argc, argv). */
#include <stdlib.h>
int main(int argc, char **argv);
int __sfi_start(int argc, char **argv) {
    exit(main(argc, argv));
}
