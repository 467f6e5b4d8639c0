/* The I/O benchmarks of the Linux guest (linuxio.c). */
void io_main(void);
