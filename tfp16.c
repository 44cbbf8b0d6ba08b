#include <immintrin.h>
#include <stdio.h>
int main(){ __m512h a=_mm512_set1_ph((_Float16)1.5f); __m512h b=_mm512_add_ph(a,a); _Float16 o[32]; _mm512_storeu_ph(o,b); printf("%f\n",(float)o[0]); return 0;}
