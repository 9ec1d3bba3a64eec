// Stylesheets are imported for esbuild, which emits them as the bundle's CSS file.
declare module "*.css";
